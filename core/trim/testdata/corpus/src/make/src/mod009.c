#include <stdio.h>

int mod009(int x)
{
    return x + 9;
}
