// module deploy
